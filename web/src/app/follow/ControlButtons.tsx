import type { ReactNode } from "react";

import { useConfirm } from "../ui/ConfirmDialog";
import { displayName } from "../ui/names";
import { ActionGroup } from "./ActionGroup";
import { followsViewer, viewerFollows } from "./relationship";
import { type FollowTarget, singleClick, useFollow } from "./useFollow";

/** What blocking `user` ends, as the viewer sees it now: the follows both ways and the requests. */
export function blockEnds(user: FollowTarget): string[] {
  const name = displayName(user);
  return [
    viewerFollows(user.relationship) && `your follow of ${name}`,
    followsViewer(user.relationship) && `${name}’s follow of you`,
    user.viewerRequestedFollow && `your request to follow ${name}`,
    user.requestedFollowViewer && `${name}’s request to follow you`,
  ].filter((end): end is string => end !== false);
}

function blockQuestion(user: FollowTarget): ReactNode {
  const name = displayName(user);
  const ends = blockEnds(user);
  return (
    <>
      <p>
        A block ends the follows between you, both ways, and any follow requests.{" "}
        {ends.length > 0 ? <strong data-block-ends>It ends {sentence(ends)}.</strong> : "You have none now."}
      </p>
      <p>
        Neither of you can follow the other until you unblock {name}; unblocking does not bring the follows back.{" "}
        {name} is not notified.
      </p>
    </>
  );
}

/** "a", "a and b", "a, b and c". */
function sentence(parts: string[]): string {
  return parts.length <= 1 ? (parts[0] ?? "") : `${parts.slice(0, -1).join(", ")} and ${parts.at(-1)}`;
}

/** Block (asked first: it ends follows and requests) / Unblock. */
export function BlockButton({ user }: { user: FollowTarget }) {
  const confirm = useConfirm();
  return (
    <ControlToggle
      user={user}
      on={user.viewerBlocks}
      act="block"
      undo="unblock"
      labels={["Block", "Unblock"]}
      ask={() =>
        confirm({ kind: "block", title: `Block ${displayName(user)}?`, body: blockQuestion(user), confirm: "Block" })
      }
    />
  );
}

/** Mute / Unmute: the graph stays as it is; a muted user's events are no longer pushed to the viewer. */
export function MuteButton({ user }: { user: FollowTarget }) {
  return <ControlToggle user={user} on={user.viewerMutes} act="mute" undo="unmute" labels={["Mute", "Unmute"]} />;
}

/** A quiet on/off control: `undo` while `on`, else `act` (after `ask`, when given). Nothing for the viewer. */
function ControlToggle({
  user,
  on,
  act,
  undo,
  labels,
  ask,
}: {
  user: FollowTarget;
  on: boolean;
  act: "block" | "mute";
  undo: "unblock" | "unmute";
  labels: [string, string];
  ask?: () => Promise<boolean>;
}) {
  const { run, error, busy } = useFollow(user);
  if (user.relationship === "SELF") return null;
  const action = on ? undo : act;
  const label = on ? labels[1] : labels[0];
  return (
    <ActionGroup error={error}>
      <button
        type="button"
        className="button button-quiet"
        data-action={action}
        aria-label={`${label} ${displayName(user)}`}
        aria-disabled={busy || undefined}
        onClick={singleClick(async () => {
          if (busy) return;
          if (!on && ask && !(await ask())) return;
          await run(action);
        })}
      >
        {label}
      </button>
    </ActionGroup>
  );
}
