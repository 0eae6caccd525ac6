import { useMutation } from "@apollo/client/react";
import { useId, useState } from "react";

import { apiProblem, userErrorText } from "../apollo/errors";
import { useViewer } from "../session/ViewerContext";
import { useConfirm } from "../ui/ConfirmDialog";
import { DEACTIVATE_ACCOUNT, noteAccountState } from "./mutations";

/**
 * Switches the viewer's account off (deactivateAccount), asked first. The answer's state, written
 * into the cache, turns the app into the screen of a deactivated account (InactiveAccount).
 */
export function Deactivate() {
  const viewer = useViewer();
  const confirm = useConfirm();
  const id = useId();
  const [problem, setProblem] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [deactivate] = useMutation(DEACTIVATE_ACCOUNT, {
    update: (cache, { data }) => {
      const payload = data?.deactivateAccount;
      if (payload && payload.errors.length === 0) noteAccountState(cache, viewer.id, payload.state);
    },
  });

  async function run() {
    if (busy) return;
    const ok = await confirm({
      kind: "deactivate",
      title: "Deactivate your account?",
      body: (
        <>
          <p>Your profile disappears for everyone else at once, and your pending follow requests end.</p>
          <p>Your follows, fans, blocks and mutes are kept until you reactivate.</p>
        </>
      ),
      confirm: "Deactivate",
    });
    if (!ok) return;
    setBusy(true);
    setProblem(null);
    try {
      const { data } = await deactivate();
      const error = data?.deactivateAccount.errors[0];
      if (error) setProblem(userErrorText(error));
    } catch (caught) {
      setProblem(apiProblem(caught).message);
    } finally {
      setBusy(false);
    }
  }

  return (
    <section className="account-part" aria-labelledby={`${id}-title`} data-part="deactivate">
      <h2 id={`${id}-title`}>Deactivate your account</h2>
      <ul className="account-facts">
        <li>Your profile disappears for everyone else at once: you leave their lists, counts and search results.</li>
        <li>
          Whom you follow, your fans, blocks and mutes are kept, and come back when you reactivate (except follows the
          other person ended meanwhile).
        </li>
        <li>Pending follow requests, sent and received, end.</li>
        <li>You can still sign in, to reactivate your account or to delete it.</li>
      </ul>
      <button
        type="button"
        className="button button-secondary"
        data-action="deactivate"
        aria-disabled={busy || undefined}
        onClick={() => void run()}
      >
        {busy ? "Deactivating…" : "Deactivate account"}
      </button>
      {problem && (
        <p role="alert" className="error">
          {problem}
        </p>
      )}
    </section>
  );
}
