import type net from 'node:net';

/** Resolves with how long the server took to close the socket; rejects past `limitMs`. */
export function closedWithin(socket: net.Socket, limitMs: number): Promise<{ afterMs: number; received: string }> {
  const started = Date.now();
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  socket.on('error', () => undefined); // a reset is a close too
  return new Promise((resolve, reject) => {
    if (socket.destroyed) return resolve({ afterMs: 0, received });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server kept the connection open for more than ${limitMs} ms`));
    }, limitMs);
    socket.once('close', () => {
      clearTimeout(timer);
      resolve({ afterMs: Date.now() - started, received });
    });
  });
}
