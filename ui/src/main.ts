import { App } from "./app";
import { apiRoot, makeClient } from "./api";

const root = document.getElementById("app");
if (root) {
  const apiUrl = apiRoot();
  new App(root, makeClient(apiUrl), apiUrl).start();
}
