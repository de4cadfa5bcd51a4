/// The now-playing page itself: one self-contained document (no fonts, scripts or images from
/// elsewhere; the box may have no internet). Sized in viewport units, so a TV across the room
/// and a phone in the hand both read it; the layout turns from side by side to stacked on a
/// narrow screen.
enum NowPlayingPageHTML {
    static let page = #"""
    <!DOCTYPE html>
    <html lang="en">
    <head>
    <meta charset="utf-8">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>Now playing</title>
    <style>
      :root { color-scheme: dark; --accent: #4fc3f7; }
      * { box-sizing: border-box; }
      body { margin: 0; min-height: 100vh; background: #101418; color: #eef2f5; font-family: system-ui, sans-serif;
             display: flex; align-items: center; justify-content: center; }
      main { display: flex; gap: 5vmin; align-items: center; padding: 5vmin; width: 100%; max-width: 160vmin; }
      #art { flex: 0 0 auto; width: 60vmin; height: 60vmin; border-radius: 2vmin; background: #1d252c; overflow: hidden;
             display: flex; align-items: center; justify-content: center; font-size: 20vmin; color: #3a4650; }
      #art img { width: 100%; height: 100%; object-fit: cover; }
      #info { flex: 1 1 auto; min-width: 0; }
      #receiver { font-size: 2.6vmin; color: #8fa1ad; letter-spacing: .1em; text-transform: uppercase; }
      #title { font-size: 7vmin; font-weight: 700; margin: 1vmin 0; overflow-wrap: anywhere; }
      #artist { font-size: 4.5vmin; color: #c8d3da; }
      #album { font-size: 3.4vmin; color: #8fa1ad; margin-top: .5vmin; }
      #bar { height: 1.2vmin; background: #2a343c; border-radius: 1vmin; margin-top: 4vmin; overflow: hidden; }
      #progress { height: 100%; width: 0; background: var(--accent); }
      #times { display: flex; justify-content: space-between; font-size: 2.6vmin; color: #8fa1ad; margin-top: 1vmin;
               font-variant-numeric: tabular-nums; }
      #controls { display: flex; gap: 3vmin; margin-top: 4vmin; align-items: center; }
      button { font-size: 4vmin; width: 11vmin; height: 11vmin; border-radius: 50%; border: 0; background: #24303a;
               color: inherit; cursor: pointer; display: flex; align-items: center; justify-content: center; padding: 0; }
      button svg { width: 55%; height: 55%; fill: currentColor; }
      button:disabled { opacity: .35; cursor: default; }
      #playpause { background: var(--accent); color: #101418; width: 14vmin; height: 14vmin; }
      #footer { font-size: 2.6vmin; color: #8fa1ad; margin-top: 3vmin; min-height: 3vmin; }
      #message { color: #ffb74d; }
      #pinbox { position: fixed; inset: 0; background: rgba(8, 10, 12, .92); display: none; flex-direction: column;
                align-items: center; justify-content: center; font-size: 4vmin; }
      #pin { font-size: 22vmin; font-weight: 700; letter-spacing: .15em; font-variant-numeric: tabular-nums; }
      @media (max-aspect-ratio: 1/1) {
        main { flex-direction: column; text-align: center; }
        #art { width: 80vw; height: 80vw; }
        #controls { justify-content: center; }
      }
    </style>
    </head>
    <body>
    <main>
      <div id="art"></div>
      <div id="info">
        <div id="receiver"></div>
        <div id="title">Nothing playing</div>
        <div id="artist"></div>
        <div id="album"></div>
        <div id="bar"><div id="progress"></div></div>
        <div id="times"><span id="elapsed">0:00</span><span id="duration"></span></div>
        <div id="controls">
          <button id="previous" title="Previous" aria-label="Previous"><svg viewBox="0 0 24 24"><path d="M6 6h2v12H6zm3.5 6 8.5 6V6z"/></svg></button>
          <button id="playpause" title="Play or pause" aria-label="Play or pause"></button>
          <button id="next" title="Next" aria-label="Next"><svg viewBox="0 0 24 24"><path d="M16 6h2v12h-2zM6 18l8.5-6L6 6z"/></svg></button>
          <button id="voldown" title="Quieter" aria-label="Quieter"><svg viewBox="0 0 24 24"><path d="M5 11h14v2H5z"/></svg></button>
          <button id="volup" title="Louder" aria-label="Louder"><svg viewBox="0 0 24 24"><path d="M11 5h2v6h6v2h-6v6h-2v-6H5v-2h6z"/></svg></button>
        </div>
        <div id="footer"><span id="state">idle</span> <span id="sender"></span> <span id="message"></span></div>
      </div>
    </main>
    <div id="pinbox"><div>Enter this PIN on your device</div><div id="pin"></div></div>
    <script>
    "use strict";
    const $ = (id) => document.getElementById(id);
    // Icons as SVG: a kiosk box may have no font with the media symbols.
    const icons = {
      play: '<svg viewBox="0 0 24 24"><path d="M8 5v14l11-7z"/></svg>',
      pause: '<svg viewBox="0 0 24 24"><path d="M6 5h4v14H6zm8 0h4v14h-4z"/></svg>',
      note: '<svg viewBox="0 0 24 24" style="width:40%;height:40%;fill:#3a4650"><path d="M12 3v10.6A4 4 0 1 0 14 17V7h4V3z"/></svg>',
    };
    let state = { state: "idle" }, receivedAt = performance.now(), coverShown = null;

    function clock(seconds) {
      if (seconds == null || !isFinite(seconds)) return "";
      seconds = Math.max(0, Math.floor(seconds));
      const h = Math.floor(seconds / 3600), m = Math.floor(seconds / 60) % 60, s = seconds % 60;
      return (h ? h + ":" + String(m).padStart(2, "0") : m) + ":" + String(s).padStart(2, "0");
    }

    function position() {
      const moving = state.state === "playing" ? (performance.now() - receivedAt) / 1000 * (state.rate || 1) : 0;
      const at = (state.position || 0) + moving;
      return state.duration ? Math.min(at, state.duration) : at;
    }

    function show(next) {
      const titleBefore = state.title;
      state = next;
      receivedAt = performance.now();
      $("receiver").textContent = next.receiver || "";
      $("title").textContent = next.title || (next.state === "idle" ? "Nothing playing" : "");
      if (next.title !== titleBefore) document.body.dataset.titleChangedAt = String(Date.now());
      $("artist").textContent = next.artist || "";
      $("album").textContent = next.album || "";
      $("state").textContent = next.state;
      $("sender").textContent = next.sender ? "· from " + next.sender : "";
      $("playpause").innerHTML = next.state === "playing" ? icons.pause : icons.play;
      const controllable = next.state !== "idle" && next.controllable;
      for (const id of ["playpause", "voldown", "volup"]) $(id).disabled = !controllable;
      $("previous").disabled = !next.canGoPrevious;
      $("next").disabled = !next.canGoNext;
      if (next.cover !== coverShown) {
        coverShown = next.cover;
        $("art").innerHTML = next.cover ? '<img alt="" src="' + next.cover + '">' : icons.note;
      }
      const pin = next.pairing && next.pairing.pin;
      $("pin").textContent = pin || "";
      $("pinbox").style.display = pin ? "flex" : "none";
      document.body.dataset.state = next.state;
    }

    function tick() {
      const at = position();
      $("elapsed").textContent = state.state === "idle" ? "" : clock(at);
      $("duration").textContent = clock(state.duration);
      $("progress").style.width = state.duration ? (100 * at / state.duration) + "%" : "0";
      requestAnimationFrame(tick);
    }

    async function command(name) {
      $("message").textContent = "";
      try {
        const reply = await fetch("/remote?command=" + encodeURIComponent(name),
                                  { method: "POST", headers: { "X-AirPlayd-Remote": "1" } });
        if (!reply.ok) $("message").textContent = await reply.text();
      } catch (error) {
        $("message").textContent = "the box does not answer";
      }
    }

    $("playpause").onclick = () => command(state.state === "playing" ? "pause" : "play");
    $("previous").onclick = () => command("previous");
    $("next").onclick = () => command("next");
    $("voldown").onclick = () => command("volumedown");
    $("volup").onclick = () => command("volumeup");

    $("playpause").innerHTML = icons.play;
    $("art").innerHTML = icons.note;
    fetch("/state").then((reply) => reply.json()).then(show).catch(() => {});
    const events = new EventSource("/events");
    events.onmessage = (event) => show(JSON.parse(event.data));
    requestAnimationFrame(tick);
    </script>
    </body>
    </html>
    """#
}
