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
// topics (i-ctopics): form[data-busy=TEXT] shows TEXT beside its buttons once it submits
//   (actions that wait for the cluster: create, delete, purge) and ignores a second submit.
//   Runs after the data-confirm listener, so a dismissed confirm shows nothing.
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("form[data-busy]").forEach((form) => {
    form.addEventListener("submit", (event) => {
      if (event.defaultPrevented) return;
      if (form.classList.contains("busy")) { event.preventDefault(); return; }
      form.classList.add("busy");
      const status = document.createElement("span");
      status.className = "progress";
      status.setAttribute("role", "status");
      status.textContent = form.getAttribute("data-busy");
      form.appendChild(status);
    });
  });
});
