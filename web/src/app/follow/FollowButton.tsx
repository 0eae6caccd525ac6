import { useId } from "react";

import { displayName } from "../ui/names";
import { useToast } from "../ui/Toasts";
import { useConfirm } from "../ui/ConfirmDialog";
import { ActionGroup } from "./ActionGroup";
import { viewerFollows } from "./relationship";
import { type FollowTarget, singleClick, useFollow } from "./useFollow";

/**
 * Follow / Unfollow for one user; "Requested" while a follow of a locked account waits for their
 * answer (a click withdraws it). Nothing for the viewer themselves, or for a user they block; a
 * disabled Follow, and why, for a user who blocks the viewer (the server would answer BLOCKED).
 *
 * `undoable` (the viewer's own following and mutuals): an unfollow shows a toast with Undo. For a
 * locked account Undo could only ask again, so the unfollow is confirmed first instead.
 */
export function FollowButton({
  user,
  undoable = false,
  tabIndex,
}: {
  user: FollowTarget;
  undoable?: boolean;
  tabIndex?: number;
}) {
  const { run, error, busy } = useFollow(user);
  const toast = useToast();
  const confirm = useConfirm();
  const noteId = useId();
  const name = displayName(user);
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
            aria-label={`Follow ${name}`}
            aria-describedby={noteId}
            title="You cannot follow someone who blocks you."
            tabIndex={tabIndex}
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

  async function unfollow() {
    if (!undoable) return run("unfollow");
    if (user.isLocked) {
      const ok = await confirm({
        kind: "unfollow-locked",
        title: `Unfollow ${name}?`,
        body: <p>{name}’s account is locked: to follow them again you would have to ask, and wait for their answer.</p>,
        confirm: "Unfollow",
      });
      return ok ? run("unfollow") : null;
    }
    const payload = await run("unfollow");
    if (payload?.changed) {
      toast({
        kind: "undo",
        text: `You unfollowed ${name}.`,
        action: { label: "Undo", run: () => run("follow", { undo: true }) },
      });
    }
    return payload;
  }

  return (
    <ActionGroup error={error}>
      <button
        type="button"
        className={following || requested ? "button button-secondary" : "button"}
        data-action={following ? "unfollow" : requested ? "withdraw" : "follow"}
        aria-label={requested ? `Requested: withdraw your request to follow ${name}` : `${label} ${name}`}
        aria-disabled={busy || undefined}
        title={requested ? "Waiting for their answer: click to withdraw the request" : undefined}
        tabIndex={tabIndex}
        onClick={singleClick(() => {
          if (busy) return;
          return following ? unfollow() : run(requested ? "unfollow" : "follow");
        })}
      >
        {label}
      </button>
    </ActionGroup>
  );
}
