// Whether this browser has seen the viewer's fans count before, kept in localStorage per viewer.
const key = (userId: string) => `followgraph.fansSeen.${userId}`;

/**
 * A first visit: this browser never saw the viewer's new fans, and the server counts every fan as
 * new (it does until the first markFansSeen). A count below the fans count means the viewer marked
 * their fans seen somewhere (another browser): that count is real.
 */
export function isFirstVisit(userId: string, newFans: number, fans: number): boolean {
  return localStorage.getItem(key(userId)) === null && newFans >= fans;
}

/** From now on the count of `userId`'s new fans is shown as it is. */
export function noteVisit(userId: string): void {
  localStorage.setItem(key(userId), "1");
}
