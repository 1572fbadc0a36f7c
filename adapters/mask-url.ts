/** A connection URL fit for a log line or an error message: the password is replaced by ****. */
export function maskUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '****';
    return u.toString();
  } catch {
    return '(unparseable URL)';
  }
}

/** host:port of a connection URL (the default port when none is given). */
export function hostPort(url: string, defaultPort: number): string {
  try {
    const u = new URL(url);
    return `${u.hostname || 'localhost'}:${u.port || defaultPort}`;
  } catch {
    return '(unparseable URL)';
  }
}
