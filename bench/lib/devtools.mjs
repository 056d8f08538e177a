// A minimal Chrome DevTools Protocol session over an inspector's WebSocket (Node 22's WebSocket):
// the profilers' (bench/profile.mjs, bench/lib/startup-profile.mjs) way to V8's profiler in workerd.

/** A Chrome DevTools Protocol session on `url` (the isolate's inspector WebSocket). */
export async function devtools(url) {
  const socket = new WebSocket(url);
  await new Promise((ok, no) => {
    socket.onopen = ok;
    socket.onerror = () => no(new Error("the inspector did not open"));
  });
  let id = 0;
  const waiting = new Map();
  socket.onmessage = (event) => {
    const message = JSON.parse(String(event.data));
    const pending = waiting.get(message.id);
    if (!pending) return;
    waiting.delete(message.id);
    if (message.error) pending.no(new Error(`${pending.method}: ${message.error.message}`));
    else pending.ok(message.result);
  };
  return {
    send(method, params = {}) {
      const n = ++id;
      socket.send(JSON.stringify({ id: n, method, params }));
      return new Promise((ok, no) => waiting.set(n, { ok, no, method }));
    },
    close: () => socket.close(),
  };
}
