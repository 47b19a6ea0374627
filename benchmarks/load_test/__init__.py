"""Load test: N simulated visitors against a fresh ``precision-explorer app`` (Voila) server.

    python -m benchmarks.load_test --visitors 10 --browsers 2 --json out.json
    python -m benchmarks.load_test --visitors 20 --arrival-interval 0      # all at once
    python -m benchmarks.load_test --visitors 5 --after leave --cull-idle-timeout 30

(from the repository root: the server and Chromium come from :mod:`tests.support`).

What it does:

- starts ``python -m explorer app`` (``--no-browser``, a free port on 127.0.0.1, its own
  ``TMPDIR`` under a fresh temporary directory, ``--max-kernels`` = the number of visitors
  unless given, short ``--cull-idle-timeout``/``--cull-interval``); with ``--preheat N``, a
  pool of N pre-heated kernels (``app --preheat N``, ``--max-kernels`` then max(visitors, N)
  + :data:`~benchmarks.load_test.config.POOL_REFILLS`), and the visitors arrive once the
  server's log says the N kernels ran the notebook (``pool_warm_s``: seconds from starting the
  server); stops it at the end with
  :func:`explorer.server.process_tree.stop_process_tree` and kills whatever it (or this
  tool: Chromium, Playwright's driver) started that is still alive, on success, error,
  deadline, SIGINT, SIGTERM or SIGHUP alike;
- lets ``--visitors`` visitors arrive one every ``--arrival-interval`` seconds (default:
  spread evenly over ``--arrive-over`` = 60 s; ``--arrival-interval 0``: all at once).
  ``--browsers`` of them (default 2, spread over the arrival order) are real browser tabs
  (Playwright, ``/usr/bin/chromium``, one browser process, one context per visitor); the
  others are light clients (below);
- each visitor loads the page, opens the Ranges, Accuracy and Bits tabs, goes back to
  Kernels, changes the op once (``--op``, default ``exp``), waits for each view to update,
  then stays idle with the page open (``--after stay``, default) or leaves
  (``--after leave``: the browser closes its tab with ``beforeunload``, so Voila's shutdown
  beacon fires; a light client closes its websocket without a beacon);
- then waits, up to a bound, for the kernel count in ``/proc`` to drop to 0 (idle culling).

A light client is what a browser tab does on the wire, without rendering: an HTTP GET of
the page (Voila executes the notebook while it streams the page), then a websocket to
``/api/kernels/<id>/channels`` (the kernel id is in the page's ``jupyter-config-data``)
on which it sends ``kernel_info_request``, opens the ``jupyter.widget.control`` comm
(control protocol 1.0.0) and asks for ``request_states``: the kernel answers with every
widget's state (``update_states``).  Voila 0.5 pages carry only the root widget's model id,
not the widget state, so this is how the client learns the model ids of the controls: the
Tab is the model whose ``_dom_classes`` has ``px-tabs``, the op dropdown ``px-op``.  An
interaction is a ``comm_msg`` with ``{"method": "update", "state": {...}}`` to that model
(``selected_index`` of the Tab; ``index`` of the Dropdown); the kernel echoes it
(``echo_update``) and sends ``update`` messages for the widgets the app redrew, which the
client applies to its copy of the widget state.  The websocket stays open (the kernel
counts one connection) while the visitor idles.

Measured (text table on stdout; everything with ``--json PATH``):

- first useful view, per visitor (seconds):
  browser: from ``page.goto`` until ``.px-app`` exists AND the Kernels tab's plot
  ``.px-kernels-plot`` contains an ``img``, ``svg``, ``canvas`` or the ``.px-heatmap``
  element; light client: from sending the GET until the page was fully received with
  status 200, the widget state (``update_states``) was received over the websocket with the
  ``px-app`` model in it, and the Kernels tab's plot Output has an output (the heatmap
  widget or an image) while its status line shows no "loading" message.  For light clients
  the time until the HTTP page was fully received is reported apart (``page_s``);
- interaction latency (seconds), per interaction: browser: from the click (tab) or
  ``select_option`` (op) until the tab shows a figure, table or non-loading message (op: and
  the Kernels tab's text changed); light client: from sending the ``update`` until the last
  ``update``/``comm_open`` for a widget inside the target tab that arrived before the
  kernel reported idle for that request, or, when the tab still said "loading" then, the
  first later update that removed it (``view_s``).  Going back to a tab whose selection
  did not change redraws nothing: the light client then has no ``view_s``; its ``reply_s``
  (send until the kernel's ``status: idle`` for the request) is reported for every
  interaction, and ``echo_s`` (until the ``echo_update``) shows the kernel applied it;
- memory: VmRSS of each visitor's kernel process (from ``/proc``, found by the kernel id in
  its command line), read right after that visitor's interactions, with whether TensorFlow
  was loaded in it (a ``libtensorflow`` mapping in ``/proc/PID/maps``); VmRSS of every
  kernel and of the Voila server when the last visitor finished its interactions; the peak
  total sampled once a second;
- failures, one per visitor at most: ``http_<status>`` (503: the server was full),
  ``timeout`` (page, view or interaction), ``ws_error``, ``kernel_error`` (an error output
  in the page, a ``Traceback`` on the kernel's stderr or an ``error`` message), ``deadline``
  / ``aborted``; error messages the app shows in its tabs are counted apart;
- culling: seconds from the moment the last visitor finished its interactions until no
  kernel process is left, within ``--cull-bound`` (default: idle timeout + 3 cull intervals
  + 60 s), and the server log's "Culling ... with N connections" lines.

Bounds: at most :data:`~benchmarks.load_test.config.MAX_VISITORS` visitors and
:data:`~benchmarks.load_test.config.MAX_BROWSERS` browsers; a global
``--deadline`` (seconds) after which the visitors are cancelled and what was measured is
reported; the run is aborted when ``MemAvailable`` drops below ``--min-available-gib``.
Figures are wall-clock on the machine at hand; a shared machine makes them noisy.

The modules, one job each (none imports one below it in this list):

- :mod:`~benchmarks.load_test.procfs`: readings of ``/proc`` (memory, start times, load);
- :mod:`~benchmarks.load_test.config`: the options of a run and their bounds;
- :mod:`~benchmarks.load_test.protocol`: the v1 kernel websocket frames;
- :mod:`~benchmarks.load_test.records`: what is recorded per visitor and interaction;
- :mod:`~benchmarks.load_test.mirror`: a light client's copy of the widget state;
- :mod:`~benchmarks.load_test.server`: the server's start (:mod:`tests.support.voila`), pool, stop;
- :mod:`~benchmarks.load_test.sampling`: ``/proc`` sampled while the run goes, the culling watch;
- :mod:`~benchmarks.load_test.context`: what the visitors share with the run;
- :mod:`~benchmarks.load_test.light`, :mod:`~benchmarks.load_test.browser`: the two kinds of visitor;
- :mod:`~benchmarks.load_test.visits`: arrivals, the wait for every visitor, their release;
- :mod:`~benchmarks.load_test.limits`: the deadline, the memory guard, signals, own children;
- :mod:`~benchmarks.load_test.report`: the summary, the text table, the JSON;
- :mod:`~benchmarks.load_test.run`: one run from start to report (``run_load_test``);
- :mod:`~benchmarks.load_test.cli`: the command line (``python -m benchmarks.load_test``).
"""
