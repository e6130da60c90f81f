// Builds the preview (the UI over the fake backend) into dist-preview/; never shipped.
import { defineConfig } from 'vite';
import { svelte } from '@sveltejs/vite-plugin-svelte';

export default defineConfig({
  plugins: [svelte()],
  base: './',
  build: {
    outDir: 'dist-preview',
    emptyOutDir: true,
    target: 'safari15',
    rollupOptions: { input: 'preview.html' },
  },
});
