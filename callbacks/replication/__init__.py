"""The replication page (/papers/replication): ids and the figure of the smart-initialisation
entry. The page has no callbacks: it shows the stored outcomes as the page is served."""
