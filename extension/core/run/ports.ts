import net from 'node:net';

const reserved = new Set<number>();

/**
 * A TCP port on 127.0.0.1 that was free when asked and that no other task of this process holds, for the task's
 * PORT variable. The OS picks it (listen on port 0), so concurrent runs on one machine rarely collide.
 * @throws Error when the OS cannot bind a socket
 */
export async function reservePort(): Promise<number> {
  for (;;) {
    const port = await new Promise<number>((resolve, reject) => {
      const server = net.createServer();
      server.unref();
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        const addr = server.address();
        server.close(() => resolve(typeof addr === 'object' && addr ? addr.port : 0));
      });
    });
    if (port && !reserved.has(port)) {
      reserved.add(port);
      return port;
    }
  }
}
