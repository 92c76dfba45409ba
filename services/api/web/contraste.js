// High contrast (eMAG 3.1's access bar), applied before the first paint from the choice kept in
// localStorage: a preference, never personal data or a credential. The switch is in access-bar.js.
try {
  if (localStorage.getItem('censo-contraste') === '1') document.documentElement.classList.add('contraste');
} catch {
  // storage refused (a private window's policy): the page keeps its normal colours
}
