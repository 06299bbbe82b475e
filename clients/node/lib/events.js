// Listener calls that cannot take the client down: EventEmitter.emit lets a throwing
// listener's error escape into the socket's 'data' handler (an uncaught exception),
// and an async listener's rejection would be unhandled. Either would end the process.

/**
 * `emitter.emit(event, ...args)`, each listener on its own: a throw or a rejection is
 * handed to `client`'s 'listenerError' listeners, else printed (console.error), and the
 * other listeners still run. Returns whether there were listeners.
 */
export function emitSafely(emitter, client, event, args) {
  const listeners = emitter.rawListeners(event); // once-wrappers remove themselves
  for (const listener of listeners) {
    try {
      const result = listener.apply(emitter, args);
      if (result && typeof result.then === 'function') result.then(undefined, (error) => report(client, error, event));
    } catch (error) {
      report(client, error, event);
    }
  }
  return listeners.length > 0;
}

function report(client, error, event) {
  if (event !== 'listenerError' && client.listenerCount('listenerError') > 0) {
    client.emit('listenerError', error, event);
  } else {
    console.error(`netmodel-client: a '${event}' listener threw:`, error);
  }
}
