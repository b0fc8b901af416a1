// The login and logout pages (`/login`, `/logout`): HTML and CSS, no script, nothing fetched
// from outside the box. What comes from a request (a message, where to go next, an account
// name) is escaped before it goes into the page. Pure functions: any thread.

enum LoginPageAssets {
    /// The login form; `message` says why the last try failed.
    static func loginPage(message: String?, next: String) -> String {
        page(
            title: "Log in",
            body: """
                <form method="post" action="/login">
                <h1>recd: log in</h1>
                \(message.map { "<p id=\"message\" class=\"bad\">\(escaped($0))</p>" } ?? "")
                <label>Account <input id="account" name="account" autocomplete="username" required autofocus></label>
                <label>Password <input id="password" name="password" type="password" autocomplete="current-password" required></label>
                <input type="hidden" name="next" value="\(escaped(next))">
                <button id="login" type="submit">Log in</button>
                </form>
                """)
    }

    /// The logout form: a POST with the session's CSRF token, so no other site can log anyone out.
    static func logoutPage(account: String, csrf: String) -> String {
        page(
            title: "Log out",
            body: """
                <form method="post" action="/logout">
                <h1>recd: log out</h1>
                <p>Logged in as <b id="account">\(escaped(account))</b>.</p>
                <input type="hidden" name="csrf" value="\(escaped(csrf))">
                <button id="logout" type="submit">Log out</button>
                <p><a href="/">Back to the status page</a></p>
                </form>
                """)
    }

    private static func page(title: String, body: String) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <link rel="icon" href="data:,">
        <title>recd: \(title)</title>
        <style>
        :root { color-scheme: light dark; }
        body { font: 16px/1.5 system-ui, sans-serif; display: grid; place-items: center; min-height: 90vh; margin: 0; }
        form { display: grid; gap: .8rem; min-width: 20rem; padding: 2rem; border: 1px solid #8886; border-radius: .5rem; }
        h1 { font-size: 1.3rem; margin: 0; }
        label { display: grid; gap: .2rem; }
        input, button { font: inherit; padding: .4rem .6rem; }
        .bad { color: #b3261e; margin: 0; }
        </style>
        </head>
        <body>
        \(body)
        </body>
        </html>
        """
    }

    /// Text for HTML: `& < > " '` as entities.
    static func escaped(_ text: String) -> String {
        var out = ""
        for character in text {
            switch character {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            default: out.append(character)
            }
        }
        return out
    }
}
