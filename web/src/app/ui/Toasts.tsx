import { createContext, type ReactNode, useCallback, useContext, useEffect, useRef, useState } from "react";

/** A short notice; with `action`, a button (Undo) that also dismisses it. */
export interface ToastInput {
  text: string;
  /** For tests and styles: what the toast is about (an event kind, "undo"). */
  kind: string;
  action?: { label: string; run: () => unknown };
}

interface Toast extends ToastInput {
  id: number;
}

const SHOWN_MS = 6000;
const MAX_SHOWN = 4;

const ToastContext = createContext<(toast: ToastInput) => void>(() => {});

/** Shows a toast for a few seconds (longer while the pointer or focus is on it). */
export function useToast(): (toast: ToastInput) => void {
  return useContext(ToastContext);
}

let nextId = 1;

/**
 * The toasts, in one polite live region that is always in the page (a region added together with
 * its first message is not announced). The page keeps room at its end for them (--toasts-height),
 * so that the last entry of a list can be scrolled above them.
 */
export function Toasts({ children }: { children: ReactNode }) {
  const [toasts, setToasts] = useState<Toast[]>([]);
  const region = useRef<HTMLDivElement>(null);
  const dismiss = useCallback((id: number) => setToasts((all) => all.filter((toast) => toast.id !== id)), []);
  const show = useCallback((toast: ToastInput) => {
    setToasts((all) => [...all.slice(-(MAX_SHOWN - 1)), { ...toast, id: nextId++ }]);
  }, []);

  useEffect(() => {
    const element = region.current;
    if (!element) return;
    const root = document.documentElement;
    const observer = new ResizeObserver(() => {
      const height = element.childElementCount > 0 ? element.getBoundingClientRect().height : 0;
      root.style.setProperty("--toasts-height", `${Math.ceil(height)}px`);
    });
    observer.observe(element);
    return () => {
      observer.disconnect();
      root.style.removeProperty("--toasts-height");
    };
  }, []);

  return (
    <ToastContext.Provider value={show}>
      {children}
      <div ref={region} className="toasts" role="region" aria-label="Notifications" aria-live="polite">
        {toasts.map((toast) => (
          <ToastItem key={toast.id} toast={toast} onDismiss={dismiss} />
        ))}
      </div>
    </ToastContext.Provider>
  );
}

function ToastItem({ toast, onDismiss }: { toast: Toast; onDismiss: (id: number) => void }) {
  const [held, setHeld] = useState(0);
  // The time left counts down only while nobody points at or focuses the toast.
  useEffect(() => {
    if (held > 0) return;
    const timer = setTimeout(() => onDismiss(toast.id), SHOWN_MS);
    return () => clearTimeout(timer);
  }, [held, toast.id, onDismiss]);
  const hold = () => setHeld((n) => n + 1);
  const release = () => setHeld((n) => Math.max(0, n - 1));
  return (
    <div
      className="toast"
      data-toast-kind={toast.kind}
      onPointerEnter={hold}
      onPointerLeave={release}
      onFocus={hold}
      onBlur={release}
    >
      <span className="toast-text">{toast.text}</span>
      {toast.action && (
        <button
          type="button"
          className="toast-action"
          data-action="undo"
          onClick={() => {
            onDismiss(toast.id);
            void toast.action?.run();
          }}
        >
          {toast.action.label}
        </button>
      )}
      <button type="button" className="toast-close" aria-label="Dismiss" onClick={() => onDismiss(toast.id)}>
        ×
      </button>
    </div>
  );
}
