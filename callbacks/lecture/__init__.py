"""The lecture view (/lecture): the guided tour on a projector (issue 16)."""
