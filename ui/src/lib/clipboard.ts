// Copy text from the web view. WebKitGTK's navigator.clipboard.writeText can stay pending
// forever under some embedders, so the synchronous execCommand('copy') on a hidden textarea
// goes first (it works inside the key press or click that asked for it); the async API is the
// fallback, with a time limit.
function execCopy(text: string): boolean {
  const ta = document.createElement('textarea');
  ta.value = text;
  ta.setAttribute('readonly', '');
  ta.style.position = 'fixed';
  ta.style.top = '0';
  ta.style.opacity = '0';
  const previous = document.activeElement as HTMLElement | null;
  document.body.appendChild(ta);
  ta.select();
  let ok = false;
  try {
    ok = document.execCommand('copy');
  } catch {
    ok = false;
  }
  ta.remove();
  previous?.focus({ preventScroll: true });
  return ok;
}

export async function copyText(text: string, timeoutMs = 1500): Promise<void> {
  if (execCopy(text)) return;
  if (typeof navigator === 'undefined' || !navigator.clipboard?.writeText) {
    throw new Error('the clipboard is not available here');
  }
  await Promise.race([
    navigator.clipboard.writeText(text),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error('the clipboard did not answer')), timeoutMs),
    ),
  ]);
}
