import { useMutation } from "@apollo/client/react";
import { useId, useState } from "react";

import { apiProblem, userErrorText } from "../apollo/errors";
import { navigate } from "../route";
import { storeDemoUser } from "../session/session";
import { useSession } from "../session/SessionContext";
import { useViewer } from "../session/ViewerContext";
import { DELETE_ACCOUNT } from "./mutations";
import { confirmsDeletion, deletedNotice } from "./state";

/**
 * Deletes the viewer's account for good (deleteAccount) once they have typed their user id, then
 * signs out with a notice saying so.
 */
export function DeleteAccount({ focus = false }: { focus?: boolean }) {
  const viewer = useViewer();
  const { session, signOut } = useSession();
  const id = useId();
  const [typed, setTyped] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [remove] = useMutation(DELETE_ACCOUNT);
  const confirmed = confirmsDeletion(typed, viewer.userId);

  async function run() {
    if (busy || !confirmed) return;
    setBusy(true);
    setProblem(null);
    try {
      const { data } = await remove();
      const payload = data?.deleteAccount;
      const error = payload?.errors[0];
      if (!payload || error) {
        setProblem(error ? userErrorText(error) : "The account could not be deleted.");
        setBusy(false);
        return;
      }
      // The demo user picked last no longer exists: the demo starts again with its default user.
      if (session.demo) storeDemoUser(null);
      // Whoever signs in next starts on their own profile, not on these settings.
      navigate("#/", { replace: true });
      signOut({ notice: deletedNotice(viewer.userId, payload.state) });
    } catch (caught) {
      setProblem(apiProblem(caught).message);
      setBusy(false);
    }
  }

  return (
    <section className="account-part danger-zone" aria-labelledby={`${id}-title`} data-part="delete">
      <h2 id={`${id}-title`}>Delete your account for good</h2>
      <p id={`${id}-what`}>
        <strong>This cannot be undone.</strong> Your profile, settings, follows both ways, requests, blocks and mutes
        are erased, and nobody can see or find the account again. Download your lists first if you want to keep them.
      </p>
      <form
        className="delete-form"
        onSubmit={(event) => {
          event.preventDefault();
          void run();
        }}
      >
        <label htmlFor={`${id}-typed`}>
          To confirm, type your user id, <strong className="user-id">{viewer.userId}</strong>
        </label>
        <div className="delete-row">
          <input
            id={`${id}-typed`}
            name="confirm-user-id"
            value={typed}
            autoComplete="off"
            // Opened on purpose (the screen of an account that is off): straight to the field.
            autoFocus={focus}
            autoCapitalize="off"
            spellCheck={false}
            aria-describedby={`${id}-what`}
            onChange={(event) => setTyped(event.target.value)}
          />
          <button
            type="submit"
            className="button button-danger"
            data-action="delete-account"
            disabled={!confirmed || busy}
          >
            {busy ? "Deleting…" : "Delete my account"}
          </button>
        </div>
      </form>
      {problem && (
        <p role="alert" className="error">
          {problem}
        </p>
      )}
    </section>
  );
}
