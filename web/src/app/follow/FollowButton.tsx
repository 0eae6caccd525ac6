import { ActionGroup } from "./ActionGroup";
import { viewerFollows } from "./relationship";
import { type FollowTarget, useFollow } from "./useFollow";

/**
 * Follow / Unfollow for one user; "Requested" while a follow of a locked account waits for their
 * answer (a click withdraws it). Nothing for the viewer themselves, or for a user they block.
 */
export function FollowButton({ user }: { user: FollowTarget }) {
  const { run, error } = useFollow(user);
  if (user.relationship === "SELF" || user.viewerBlocks) return null;
  const following = viewerFollows(user.relationship);
  const requested = !following && user.viewerRequestedFollow;
  const label = following
    ? "Unfollow"
    : requested
      ? "Requested"
      : user.relationship === "FOLLOWED_BY"
        ? "Follow back"
        : "Follow";
  return (
    <ActionGroup error={error}>
      <button
        type="button"
        className={following || requested ? "button button-secondary" : "button"}
        data-action={following ? "unfollow" : requested ? "withdraw" : "follow"}
        title={requested ? "Waiting for their answer: click to withdraw the request" : undefined}
        onClick={() => void run(following || requested ? "unfollow" : "follow")}
      >
        {label}
      </button>
    </ActionGroup>
  );
}
