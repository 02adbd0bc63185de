// @ts-check
// API token handling: kept in sessionStorage only (gone when the tab closes), asked for on a 401.

const STORAGE_KEY = "atropos-edge.dashboard.token";

/** @returns {string | null} */
export function getToken() {
  try {
    return sessionStorage.getItem(STORAGE_KEY);
  } catch {
    return null; // storage disabled: behave as if no token was given
  }
}

/** @param {string} token */
export function setToken(token) {
  sessionStorage.setItem(STORAGE_KEY, token);
}

export function clearToken() {
  sessionStorage.removeItem(STORAGE_KEY);
}

/** @type {Promise<void> | null} */
let pendingPrompt = null;

/**
 * Shows the token dialog and resolves once the user submitted a token. Concurrent 401s share one
 * dialog.
 * @param {string} [message] shown when a previous token was rejected
 * @returns {Promise<void>}
 */
export function promptForToken(message) {
  if (pendingPrompt) return pendingPrompt;
  const dialog = /** @type {HTMLDialogElement} */ (document.getElementById("token-dialog"));
  const form = /** @type {HTMLFormElement} */ (document.getElementById("token-form"));
  const input = /** @type {HTMLInputElement} */ (document.getElementById("token-input"));
  const error = /** @type {HTMLElement} */ (document.getElementById("token-error"));
  error.hidden = !message;
  error.textContent = message ?? "";
  input.value = "";
  pendingPrompt = new Promise((resolve) => {
    /** @param {SubmitEvent} event */
    const onSubmit = (event) => {
      const token = input.value.trim();
      if (!token) {
        event.preventDefault();
        return;
      }
      setToken(token);
      form.removeEventListener("submit", onSubmit);
      dialog.removeEventListener("cancel", onCancel);
      pendingPrompt = null;
      resolve();
    };
    // Escape would leave the dashboard with nothing to show; keep the dialog up.
    /** @param {Event} event */
    const onCancel = (event) => event.preventDefault();
    form.addEventListener("submit", onSubmit);
    dialog.addEventListener("cancel", onCancel);
  });
  if (!dialog.open) dialog.showModal();
  input.focus();
  return pendingPrompt;
}
