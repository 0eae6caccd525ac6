/** Where an account stands (User.accountState). Other than ACTIVE, the app shows InactiveAccount. */
export type AccountState = "ACTIVE" | "DEACTIVATED" | "SUSPENDED" | "DELETING";

/** What the screen of an account that is off says, and what it offers. */
export interface InactiveScreen {
  title: string;
  lines: string[];
  canReactivate: boolean;
  canDelete: boolean;
}

const GONE = "Nobody else can see your profile or find you: to everyone else, your account does not exist.";

/** The screen for `state`; null for an active account (the app itself). */
export function inactiveScreen(state: AccountState): InactiveScreen | null {
  switch (state) {
    case "ACTIVE":
      return null;
    case "DEACTIVATED":
      return {
        title: "Your account is deactivated",
        lines: [
          GONE,
          "Whom you follow, your fans, blocks and mutes are kept. Reactivate to bring them back, except follows the other person ended meanwhile.",
        ],
        canReactivate: true,
        canDelete: true,
      };
    case "SUSPENDED":
      return {
        title: "Your account is suspended",
        lines: [
          `An administrator switched your account off. ${GONE}`,
          "Only an administrator can lift a suspension: ask the people who run this service. You can still download your lists, or delete your account.",
        ],
        canReactivate: false,
        canDelete: true,
      };
    case "DELETING":
      return {
        title: "Your account is being deleted",
        lines: [
          "It is already gone for everyone else; its follows, requests, blocks and mutes are being removed. There is nothing left to do here.",
        ],
        canReactivate: false,
        canDelete: false,
      };
  }
}

/** Whether what was typed confirms the deletion of `userId`'s account: the id itself (an @ before it is fine). */
export function confirmsDeletion(typed: string, userId: string): boolean {
  return typed.trim().replace(/^@/, "") === userId;
}

/** What the signed-out page says after deleteAccount answered with `state` (null: deleted already). */
export function deletedNotice(userId: string, state: AccountState | null): string {
  return state === "DELETING"
    ? `Your account @${userId} is being deleted. It is already gone for everyone else; the rest is removed in the background.`
    : `Your account @${userId} has been deleted, with everything it held. You are signed out.`;
}
