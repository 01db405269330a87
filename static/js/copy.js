// "Copy" buttons: copy the text of the element their data-copy selector names.
document.addEventListener("click", function (e) {
  var button = e.target.closest("button.copy");
  if (!button) return;
  var source = document.querySelector(button.dataset.copy);
  if (!source || !navigator.clipboard) return;
  navigator.clipboard.writeText(source.textContent).then(function () {
    button.textContent = "Copied";
  });
});
