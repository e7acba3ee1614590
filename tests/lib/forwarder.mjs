// forwarder.mjs - a TCP forwarder for tests of dropped networks: it pipes every connection to a
// target port, can cut them all at once (no Close frame, no FIN from the peer's side: the network
// is gone) and hold new ones (accepted, not yet forwarded) until released: a network that drops
// and comes back. Used by the stateful-reconnect tests of proxy mode (tests/relay) and service
// mode (tests/service).
import net from "node:net";
import { closeServer, listen } from "./common.mjs";

// A forwarder to 127.0.0.1:targetPort on a free port of its own. Returns
// { url, port, held(), cut(), release(), close() }.
export async function forwarder(targetPort) {
    const live = new Set();
    const held = [];
    let holding = false;
    const pipe = (client) => {
        const upstream = net.connect(targetPort, "127.0.0.1");
        live.add(client).add(upstream);
        const end = () => { client.destroy(); upstream.destroy(); live.delete(client); live.delete(upstream); };
        client.on("error", end).on("close", end);
        upstream.on("error", end).on("close", end);
        client.pipe(upstream).pipe(client);
    };
    const server = net.createServer((client) => {
        if (holding) {
            client.pause();
            held.push(client);
            client.on("error", () => {});
        } else {
            pipe(client);
        }
    });
    const port = await listen(server);
    return {
        url: `http://127.0.0.1:${port}`,
        port,
        held: () => held.length,
        cut() {
            holding = true;
            for (const s of live) s.destroy();
            live.clear();
        },
        release() {
            holding = false;
            for (const c of held.splice(0)) { pipe(c); c.resume(); }
        },
        close: () => {
            for (const s of live) s.destroy();
            for (const c of held.splice(0)) c.destroy();
            return closeServer(server);
        },
    };
}
