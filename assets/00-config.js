/* The ids and constants the scripts take from Python (layouts/client_config.py): the JSON
   the page carries in its #bnviz-config element, as window.bnvizConfig. This file runs
   first (assets load in name order), so a script names IDS.COUNTER, never an id's text. */
window.bnvizConfig = JSON.parse(document.getElementById("bnviz-config").textContent);
