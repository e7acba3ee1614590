// demo.js - the two chat panes of the /demo page. Each pane sends with ChatHub.Broadcast(text)
// and shows every "broadcast" the hub pushes, whoever sent it. The legacy pane uses the generated
// hub proxy ($.connection.chatHub, GET /signalr/hubs), the Core pane @microsoft/signalr on /chat.
"use strict";

function pane(id) {
    const root = document.getElementById(id);
    const state = root.querySelector(".state");
    const list = root.querySelector(".messages");
    const form = root.querySelector("form");
    const input = root.querySelector("input");
    return {
        setState(name, text) {
            state.dataset.state = name;
            state.textContent = text;
        },
        show(text) {
            const li = document.createElement("li");
            li.textContent = text; // text, never HTML: anyone may send anything
            list.appendChild(li);
            list.scrollTop = list.scrollHeight;
        },
        onSend(send) {
            form.addEventListener("submit", (e) => {
                e.preventDefault();
                const text = input.value.trim();
                if (!text) return;
                input.value = "";
                send(text).catch((err) => this.show(`(not sent: ${err.message || err})`));
            });
        },
    };
}

function startLegacy() {
    const ui = pane("legacy");
    const chat = $.connection.chatHub;
    chat.client.broadcast = (message) => ui.show(message);
    const hub = $.connection.hub;
    hub.stateChanged((change) => {
        if (change.newState === $.signalR.connectionState.reconnecting) ui.setState("reconnecting", "reconnecting...");
        if (change.newState === $.signalR.connectionState.disconnected) ui.setState("disconnected", "disconnected");
    });
    hub.reconnected(() => ui.setState("connected", `connected (${hub.transport.name}, id ${hub.id})`));
    hub.start()
        .done(() => ui.setState("connected", `connected (${hub.transport.name}, id ${hub.id})`))
        .fail((err) => ui.setState("failed", `could not connect: ${err.message || err}`));
    // jQuery's promise into a standard one for the pane.
    ui.onSend((text) => new Promise((resolve, reject) => chat.server.broadcast(`jQuery: ${text}`).done(resolve).fail(reject)));
}

function startCore() {
    const ui = pane("core");
    const conn = new signalR.HubConnectionBuilder().withUrl("/chat").withAutomaticReconnect().build();
    conn.on("broadcast", (message) => ui.show(message));
    conn.on("welcome", () => {}); // ChatHub greets each Core client; nothing to show
    conn.onreconnecting(() => ui.setState("reconnecting", "reconnecting..."));
    conn.onreconnected(() => ui.setState("connected", `connected (id ${conn.connectionId})`));
    conn.onclose(() => ui.setState("disconnected", "disconnected"));
    conn.start()
        .then(() => ui.setState("connected", `connected (id ${conn.connectionId})`))
        .catch((err) => ui.setState("failed", `could not connect: ${err.message || err}`));
    ui.onSend((text) => conn.invoke("Broadcast", `Core: ${text}`));
}

startLegacy();
startCore();
