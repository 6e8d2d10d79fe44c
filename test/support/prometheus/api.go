package prometheus

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// Alert is one alert of /api/v1/alerts: pending or firing.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	// State is "pending" (its `for` not yet over) or "firing".
	State string `json:"state"`
	// ActiveAt is when its expression first returned it.
	ActiveAt time.Time `json:"activeAt"`
	Value    string    `json:"value"`
}

// Sample is one element of an instant vector.
type Sample struct {
	Metric map[string]string
	Value  float64
	Time   time.Time
}

// Alerts returns every pending and firing alert.
func (s *Server) Alerts(ctx context.Context) ([]Alert, error) {
	var data struct {
		Alerts []Alert `json:"alerts"`
	}
	if err := s.get(ctx, "/api/v1/alerts", nil, &data); err != nil {
		return nil, err
	}
	return data.Alerts, nil
}

// Firing returns the firing alerts named alertname whose labels include
// every label in labels.
func (s *Server) Firing(ctx context.Context, alertname string, labels map[string]string) ([]Alert, error) {
	return s.alertsIn(ctx, "firing", alertname, labels)
}

// Active returns the pending and firing alerts named alertname whose
// labels include every label in labels.
func (s *Server) Active(ctx context.Context, alertname string, labels map[string]string) ([]Alert, error) {
	return s.alertsIn(ctx, "", alertname, labels)
}

func (s *Server) alertsIn(ctx context.Context, state, alertname string, labels map[string]string) ([]Alert, error) {
	all, err := s.Alerts(ctx)
	if err != nil {
		return nil, err
	}
	var out []Alert
	for _, a := range all {
		if a.Labels["alertname"] != alertname || (state != "" && a.State != state) {
			continue
		}
		if HasLabels(a.Labels, labels) {
			out = append(out, a)
		}
	}
	return out, nil
}

// HasLabels tells whether have holds every label of want, with its value.
// As in PromQL, a label whose value is empty is no label: want["subject"]
// == "" matches alerts without a subject.
func HasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// Query runs an instant PromQL query now and returns its vector; any
// other result type is an error.
func (s *Server) Query(ctx context.Context, query string) ([]Sample, error) {
	var data struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := s.get(ctx, "/api/v1/query", url.Values{"query": {query}}, &data); err != nil {
		return nil, err
	}
	if data.ResultType != "vector" {
		return nil, fmt.Errorf("query %q returned a %s, not a vector", query, data.ResultType)
	}
	out := make([]Sample, 0, len(data.Result))
	for _, r := range data.Result {
		ts, ok := r.Value[0].(float64)
		str, ok2 := r.Value[1].(string)
		if !ok || !ok2 {
			return nil, fmt.Errorf("query %q: unexpected sample %v", query, r.Value)
		}
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: sample value %q: %w", query, str, err)
		}
		out = append(out, Sample{Metric: r.Metric, Value: v, Time: time.UnixMilli(int64(ts * 1000))})
	}
	return out, nil
}

// get calls the HTTP API and decodes the envelope's data into out.
func (s *Server) get(ctx context.Context, path string, query url.Values, out any) error {
	u := s.URL + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("prometheus %s: %w", path, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("prometheus %s: %w", path, err)
	}
	var envelope struct {
		Status    string          `json:"status"`
		Data      json.RawMessage `json:"data"`
		ErrorType string          `json:"errorType"`
		Error     string          `json:"error"`
	}
	if err := json.Unmarshal(body, &envelope); err != nil {
		return fmt.Errorf("prometheus %s: HTTP %d: %s", path, resp.StatusCode, body)
	}
	if envelope.Status != "success" {
		return fmt.Errorf("prometheus %s: %s: %s", path, envelope.ErrorType, envelope.Error)
	}
	if err := json.Unmarshal(envelope.Data, out); err != nil {
		return fmt.Errorf("prometheus %s: decoding data: %w", path, err)
	}
	return nil
}

// Poll calls cond every 500 ms until it returns true or timeout passes.
// cond's errors do not stop it (a server between two scrapes or rule
// evaluations answers again); the timeout's error names the condition
// (what) and carries cond's last error.
func Poll(ctx context.Context, timeout time.Duration, what string, cond func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last error
	for {
		ok, err := cond(ctx)
		if err == nil && ok {
			return nil
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			if last != nil {
				return fmt.Errorf("%s: not within %s (last error: %v)", what, timeout, last)
			}
			return fmt.Errorf("%s: not within %s", what, timeout)
		case <-time.After(500 * time.Millisecond):
		}
	}
}
