import { useEffect } from "react";

const APP = "FollowGraph";

/** The tab's title names what is shown: "Jing Xu (@3290) · FollowGraph". */
export function useDocumentTitle(title: string | null): void {
  useEffect(() => {
    document.title = title ? `${title} · ${APP}` : APP;
  }, [title]);
}
