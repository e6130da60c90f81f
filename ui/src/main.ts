import { mount } from 'svelte';
import App from './App.svelte';
import QuickCapture from './components/QuickCapture.svelte';
import './app.css';

const target = document.getElementById('app');
if (!target) throw new Error('no #app element');
// The same page serves the quick-capture window (`?window=capture`, opened by the Rust side).
const capture = new URLSearchParams(location.search).get('window') === 'capture';
export default capture ? mount(QuickCapture, { target }) : mount(App, { target });
