// Package htmltest opens protocheck's HTML trace pages in a real headless
// browser for tests: Debian's chromium, with the network disabled, so a
// test proves the page works offline. Tests skip when no browser is
// installed (CI installs one when it can).
package htmltest

import (
	"bytes"
	"context"
	"os/exec"
	"regexp"
	"testing"
	"time"
)

// Chromium returns the path of a chromium binary, or skips the test.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skip("no chromium on PATH (apt-get install chromium): the page is not tried in a browser")
	return ""
}

// DumpDOM loads url in headless chromium with the network disabled (every
// request goes to a proxy that does not exist) and returns the DOM after
// the page's scripts ran.
func DumpDOM(t testing.TB, bin, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--disable-gpu", "--no-sandbox",
		"--no-first-run", "--disable-extensions", "--disable-dev-shm-usage",
		"--proxy-server=127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
		"--user-data-dir="+t.TempDir(), "--dump-dom", url)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v\n%s", url, err, stderr.String())
	}
	return string(out)
}

var (
	selectedRow = regexp.MustCompile(`<tr id="step-(\d+)" data-step="\d+" class="[^"]*\bselected\b`)
	shownState  = regexp.MustCompile(`<section class="state" id="state-(\d+)" data-step="\d+">`)
)

// Selection returns the selected row and the state panel shown in a
// dumped DOM, or fails if there is not exactly one of each.
func Selection(t testing.TB, dom string) (row, state string) {
	t.Helper()
	rows, states := selectedRow.FindAllStringSubmatch(dom, -1), shownState.FindAllStringSubmatch(dom, -1)
	if len(rows) != 1 || len(states) != 1 {
		t.Fatalf("the DOM has %d selected rows and %d shown states, want one of each", len(rows), len(states))
	}
	return rows[0][1], states[0][1]
}

// Click returns page with a script that clicks the swimlane row of step
// when the page loads, as a user's click would come.
func Click(page []byte, step int) []byte {
	script := []byte(`<script>document.querySelector('#swimlane tr[data-step="` + itoa(step) + `"]').click();</script></body>`)
	return bytes.Replace(page, []byte("</body>"), script, 1)
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
