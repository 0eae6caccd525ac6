import { useLayoutEffect } from "react";

import { restoreScroll } from "../route";
import { DataDownload } from "./DataDownload";
import { DataUpload } from "./DataUpload";
import { Deactivate } from "./Deactivate";
import { DeleteAccount } from "./DeleteAccount";

/** Settings › Account: the lists as files, both ways; deactivation; deletion. */
export function AccountSettings() {
  useLayoutEffect(() => restoreScroll(true), []);
  return (
    <div className="account-settings">
      <DataDownload />
      <DataUpload />
      <Deactivate />
      <DeleteAccount />
    </div>
  );
}
