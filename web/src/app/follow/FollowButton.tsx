import { useId } from "react";

import { ActionGroup } from "./ActionGroup";
import { viewerFollows } from "./relationship";
import { type FollowTarget, useFollow } from "./useFollow";

/**
 * Follow / Unfollow for one user; "Requested" while a follow of a locked account waits for their
 * answer (a click withdraws it). Nothing for the viewer themselves, or for a user they block; a
 * disabled Follow, and why, for a user who blocks the viewer (the server would answer BLOCKED).
 */
export function FollowButton({ user }: { user: FollowTarget }) {
  const { run, error } = useFollow(user);
  const noteId = useId();
  if (user.relationship === "SELF" || user.viewerBlocks) return null;
  if (user.blocksViewer) {
    return (
      <ActionGroup error={error}>
        <span className="follow-blocked">
          <button
            type="button"
            className="button"
            data-action="follow-blocked"
            disabled
            aria-describedby={noteId}
            title="You cannot follow someone who blocks you."
          >
            Follow
          </button>
          <span id={noteId} className="follow-note" data-follow-note="blocks-viewer">
            They block you
          </span>
        </span>
      </ActionGroup>
    );
  }
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
