package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxAdminAnswer bounds an admin API answer read by the commands.
const maxAdminAnswer = 1 << 20

// PauseJob pauses job at the jobwatch at base (jobwatch pause): until as
// ParseUntil reads it, there, by the running jobwatch's clock.
func PauseJob(ctx context.Context, client *http.Client, base, job, until, reason string) (PauseAnswer, error) {
	body, err := adminPost(ctx, client, base, job, "pause", url.Values{"until": {until}, "reason": {reason}})
	if err != nil {
		return PauseAnswer{}, err
	}
	var ans PauseAnswer
	if err := json.Unmarshal(body, &ans); err != nil {
		return PauseAnswer{}, fmt.Errorf("the answer: %w", err)
	}
	return ans, nil
}

// ResumeJob ends job's pause at the jobwatch at base (jobwatch resume).
func ResumeJob(ctx context.Context, client *http.Client, base, job string) error {
	_, err := adminPost(ctx, client, base, job, "resume", nil)
	return err
}

// adminPost posts form to the admin API's action of job and returns the
// answer's body; an answer other than 200 is an error with its text (the
// reason the server gave: the flag it needs, an unknown job...).
func adminPost(ctx context.Context, client *http.Client, base, job, action string, form url.Values) ([]byte, error) {
	u, err := url.Parse(strings.TrimSuffix(base, "/"))
	if err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	u = u.JoinPath("/api/v1/jobs", url.PathEscape(job), action)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAdminAnswer))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		msg := strings.TrimSpace(string(body))
		if resp.StatusCode == http.StatusNotFound && !strings.Contains(msg, "no such job") {
			msg = "no admin API there (a jobwatch before pauses?)"
		}
		return nil, fmt.Errorf("%s: %s: %s", u.Redacted(), resp.Status, msg)
	}
	return body, nil
}
