import { ActionGroup } from "./ActionGroup";
import { type FollowTarget, useFollow } from "./useFollow";

/** Block / Unblock. Blocking ends the follows both ways and any requests; unblocking restores none. */
export function BlockButton({ user }: { user: FollowTarget }) {
  return <ControlToggle user={user} on={user.viewerBlocks} act="block" undo="unblock" labels={["Block", "Unblock"]} />;
}

/** Mute / Unmute: the graph stays as it is; a muted user's events are no longer pushed to the viewer. */
export function MuteButton({ user }: { user: FollowTarget }) {
  return <ControlToggle user={user} on={user.viewerMutes} act="mute" undo="unmute" labels={["Mute", "Unmute"]} />;
}

/** A quiet on/off control: `undo` while `on`, else `act`. Nothing for the viewer themselves. */
function ControlToggle({
  user,
  on,
  act,
  undo,
  labels,
}: {
  user: FollowTarget;
  on: boolean;
  act: "block" | "mute";
  undo: "unblock" | "unmute";
  labels: [string, string];
}) {
  const { run, error } = useFollow(user);
  if (user.relationship === "SELF") return null;
  const action = on ? undo : act;
  return (
    <ActionGroup error={error}>
      <button type="button" className="button button-quiet" data-action={action} onClick={() => void run(action)}>
        {on ? labels[1] : labels[0]}
      </button>
    </ActionGroup>
  );
}
