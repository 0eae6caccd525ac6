/** How a user is named in sentences and on buttons: their name, else @userId. */
export function displayName(user: { userId: string; name?: string | null }): string {
  return user.name ?? `@${user.userId}`;
}
