// Franz console: the only client-side code (franz/console/__init__.py says why so little).
// [data-refresh=URL][data-every=MS]: replace the element's inner HTML with the fragment at URL
//   every MS milliseconds (live charts, lag); failures keep the last content.
// form[data-confirm=TEXT]: ask before submitting (destructive actions).
"use strict";
function franzRefresh(el) {
  const url = el.getAttribute("data-refresh");
  const every = parseInt(el.getAttribute("data-every") || "2000", 10);
  const tick = () => {
    fetch(url, { headers: { "X-Fragment": "1" } })
      .then((r) => (r.ok ? r.text() : Promise.reject(r.status)))
      .then((html) => { el.innerHTML = html; el.dispatchEvent(new Event("franz:refreshed")); })
      .catch(() => {})
      .finally(() => setTimeout(tick, every));
  };
  setTimeout(tick, every);
}
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-refresh]").forEach(franzRefresh);
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.getAttribute("data-confirm"))) event.preventDefault();
    });
  });
});
