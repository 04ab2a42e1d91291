// Package metricstest scrapes a /metrics endpoint in tests the way
// Prometheus does: it asks for the text exposition format and parses the
// answer with the official parser (github.com/prometheus/common/expfmt).
package metricstest

import (
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is one scrape: the metric families by name.
type Families map[string]*dto.MetricFamily

// Scrape GETs url (http://HOST:PORT/metrics) asking for the Prometheus text
// format, checks the answer is in it, and parses it.
func Scrape(t testing.TB, url string) Families {
	t.Helper()
	fams, err := ScrapeErr(url)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// ScrapeErr is Scrape returning its error, for polling.
func ScrapeErr(url string) (Families, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	c := &http.Client{Timeout: 10 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s\n%s", url, resp.Status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		return nil, fmt.Errorf("GET %s: Content-Type %q, want the text format text/plain; version=0.0.4", url, ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("GET %s: not the Prometheus text format: %w\n%s", url, err, body)
	}
	return Families(fams), nil
}

// Value returns the value of the series of family name whose labels
// include labels (name, value pairs), summed over every series that
// matches: a counter's or gauge's value, a histogram's sample count. A
// family or series that is absent is 0.
func (f Families) Value(name string, labels ...string) float64 {
	fam, ok := f[name]
	if !ok {
		return 0
	}
	var sum float64
	for _, m := range fam.GetMetric() {
		if !hasLabels(m, labels) {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

// Sum returns the sum of the samples of histogram family name whose labels
// include labels.
func (f Families) Sum(name string, labels ...string) float64 {
	var sum float64
	if fam, ok := f[name]; ok {
		for _, m := range fam.GetMetric() {
			if hasLabels(m, labels) && m.Histogram != nil {
				sum += m.GetHistogram().GetSampleSum()
			}
		}
	}
	return sum
}

// Series lists the series of family name as name{label="value",...} value,
// sorted, for a failure message.
func (f Families) Series(name string) string {
	fam, ok := f[name]
	if !ok {
		return name + ": absent"
	}
	var lines []string
	for _, m := range fam.GetMetric() {
		var ls []string
		for _, l := range m.GetLabel() {
			ls = append(ls, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
		}
		sort.Strings(ls)
		lines = append(lines, fmt.Sprintf("%s{%s} %g", name, strings.Join(ls, ","), Families{name: {Metric: []*dto.Metric{m}}}.Value(name)))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func hasLabels(m *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
