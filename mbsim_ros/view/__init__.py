"""The 3D view in the browser (docs/VIEW.md): the scene graph as plain data
(``scene_graph.py``), the viser backend (``server.py``), a recording's player
(``playback.py``) and the live view of a running Simulator (``live.py``)."""
