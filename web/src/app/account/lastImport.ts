// GET /account/import answers 404 to a user who never imported, which browsers log as an error
// on every visit: the app asks only in a browser that started an import for the user (or after an
// upload the server refused because one runs).
const key = (userId: string) => `followgraph.import.${userId}`;

/** Whether this browser started an import for `userId` whose status may be worth showing. */
export function hasImported(userId: string): boolean {
  return localStorage.getItem(key(userId)) !== null;
}

/** Notes that `userId` has an import to show (true), or none (false: the server knows of none). */
export function noteImported(userId: string, imported: boolean): void {
  if (imported) localStorage.setItem(key(userId), "1");
  else localStorage.removeItem(key(userId));
}
