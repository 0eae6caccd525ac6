import { useConfirm } from "../ui/ConfirmDialog";
import { displayName } from "../ui/names";
import { ActionGroup } from "./ActionGroup";
import { type FollowTarget, singleClick, useFollow } from "./useFollow";

/** On the viewer's own fans: makes the user stop following the viewer (removeFan), asked first. */
export function RemoveFanButton({ user }: { user: FollowTarget }) {
  const { run, error, busy } = useFollow(user);
  const confirm = useConfirm();
  const name = displayName(user);
  return (
    <ActionGroup error={error}>
      <button
        type="button"
        className="button button-quiet"
        data-action="remove-fan"
        aria-label={`Remove ${name} from your fans`}
        aria-disabled={busy || undefined}
        onClick={singleClick(async () => {
          if (busy) return;
          const ok = await confirm({
            kind: "remove-fan",
            title: `Remove ${name} from your fans?`,
            body: (
              <p>
                {name} stops following you, and their app tells them so. They can follow you again; a block stops
                that.
              </p>
            ),
            confirm: "Remove",
          });
          if (ok) await run("removeFan");
        })}
      >
        Remove
      </button>
    </ActionGroup>
  );
}
