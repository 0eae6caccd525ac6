import { createContext, type ReactNode, useCallback, useContext, useEffect, useId, useRef, useState } from "react";

/** What to ask: a question, what it will do, and the button that does it. */
export interface ConfirmInput {
  title: string;
  body: ReactNode;
  confirm: string;
  /** For tests: what is being confirmed (block, remove-fan, unlock). */
  kind: string;
}

type Ask = (input: ConfirmInput) => Promise<boolean>;

const ConfirmContext = createContext<Ask>(async () => true);

/** Asks before an action that cannot simply be taken back; resolves true when confirmed. */
export function useConfirm(): Ask {
  return useContext(ConfirmContext);
}

interface Open extends ConfirmInput {
  resolve: (confirmed: boolean) => void;
}

/**
 * One modal <dialog> for the whole app: the browser keeps focus inside it, Escape cancels, and
 * focus goes back to the button that opened it. Cancel has the focus first: Enter does no harm.
 */
export function ConfirmDialogs({ children }: { children: ReactNode }) {
  const [open, setOpen] = useState<Open | null>(null);
  const dialog = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const bodyId = useId();

  const ask = useCallback<Ask>(
    (input) =>
      new Promise<boolean>((resolve) => {
        setOpen({ ...input, resolve });
      }),
    [],
  );

  useEffect(() => {
    if (open && dialog.current && !dialog.current.open) dialog.current.showModal();
  }, [open]);

  function close(confirmed: boolean) {
    open?.resolve(confirmed);
    setOpen(null);
    dialog.current?.close();
  }

  return (
    <ConfirmContext.Provider value={ask}>
      {children}
      <dialog
        ref={dialog}
        className="dialog"
        aria-labelledby={titleId}
        aria-describedby={bodyId}
        data-confirm={open?.kind}
        onCancel={(event) => {
          event.preventDefault();
          close(false);
        }}
      >
        {open && (
          <form
            method="dialog"
            onSubmit={(event) => {
              event.preventDefault();
              close(true);
            }}
          >
            <h2 id={titleId}>{open.title}</h2>
            <div id={bodyId} className="dialog-body">
              {open.body}
            </div>
            <div className="dialog-buttons">
              <button type="button" className="button button-secondary" autoFocus onClick={() => close(false)}>
                Cancel
              </button>
              <button type="submit" className="button button-danger" data-action="confirm">
                {open.confirm}
              </button>
            </div>
          </form>
        )}
      </dialog>
    </ConfirmContext.Provider>
  );
}
