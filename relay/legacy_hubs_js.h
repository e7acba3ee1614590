/* legacy_hubs_js.h - the generated hub proxy script of the legacy endpoint (GET /signalr/hubs).
 *
 * Pages of legacy ASP.NET SignalR 2.x apps load <script src="/signalr/hubs">
 * after jquery.signalR and then use $.connection.chatHub.server.send(...)
 * and $.connection.chatHub.client.x = handler. The original generates that
 * script from its hub classes (DefaultJavaScriptProxyGenerator); the relay,
 * which knows no hub classes, writes it from its configuration:
 *
 *   - one proxy per served hub, under its configured name with the first
 *     letter lower-cased (the original's camel case: ChatHub -> chatHub),
 *     created with createHubProxy('<that name>');
 *   - server: with methods configured (--hub-methods), one function per
 *     method, camel-cased, invoking the method by its configured name, as
 *     the original lists a hub's methods; without, an ES2015 Proxy that turns
 *     any method called on it into an invocation of that name (ASP.NET Core
 *     matches hub method names case-insensitively). A browser without Proxy
 *     (Internet Explorer) gets an empty server object there: the page must
 *     use proxy.invoke('Method', ...) or configure the methods;
 *   - client: {} for the page's handlers, subscribed when the connection
 *     starts and unsubscribed when it disconnects, as the original does;
 *   - $.connection.hub = $.hubConnection('<endpoint>', {useDefaultPath:false})
 *     with the proxies on $.connection.
 *
 * Pure text generation: no I/O. */
#ifndef SR_LEGACY_HUBS_JS_H
#define SR_LEGACY_HUBS_JS_H

#include <stdbool.h>
#include <stddef.h>

#include "containers/buf.h"

struct legacy_hubs_js_hub {
    const char *name;    /* configured: letters, digits, '-', '_', '.' (relay/config.c checks) */
    const char *methods; /* "Send,JoinGroup" (identifiers, relay/config.c checks), or NULL */
};

/* Appends the script to out. endpoint is the legacy endpoint's path
 * ("/signalr"). False when out of memory or a name is not one config.c
 * accepts (out is then left as it was). */
bool legacy_hubs_js(struct buf *out, const char *endpoint, const struct legacy_hubs_js_hub *hubs, size_t count);

#endif
