package eval

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Run is one run of one case: what it missed (nothing when it passed), or
// the error that kept it from an answer.
type Run struct {
	Case     string
	N        int // from 1
	Misses   []string
	Err      error
	Duration time.Duration
	Cost     float64
}

// Passed reports whether the run met every expectation.
func (r Run) Passed() bool { return r.Err == nil && len(r.Misses) == 0 }

// CaseResult is a case's runs: passed when the share of passing runs
// reaches the set's threshold.
type CaseResult struct {
	Name   string
	Runs   []Run
	Passed bool
}

// PassRate is the share of the case's runs that passed.
func (c CaseResult) PassRate() float64 {
	if len(c.Runs) == 0 {
		return 0
	}
	n := 0
	for _, r := range c.Runs {
		if r.Passed() {
			n++
		}
	}
	return float64(n) / float64(len(c.Runs))
}

// Results groups runs by case, in the set's order, and says which cases
// passed.
func Results(s Set, runs []Run) []CaseResult {
	out := make([]CaseResult, len(s.Cases))
	at := map[string]int{}
	for i, c := range s.Cases {
		out[i].Name = c.Name
		at[c.Name] = i
	}
	for _, r := range runs {
		if i, ok := at[r.Case]; ok {
			out[i].Runs = append(out[i].Runs, r)
		}
	}
	for i := range out {
		out[i].Passed = len(out[i].Runs) > 0 && out[i].PassRate() >= s.Threshold
	}
	return out
}

// WriteTable writes one line per case (passes of runs, mean latency and
// cost, and the first miss of a failed run) and a last line with the
// cases passed.
func WriteTable(w io.Writer, results []CaseResult) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CASE\tRESULT\tPASSED\tMEAN LATENCY\tMEAN COST\tFIRST MISS")
	passed := 0
	for _, c := range results {
		var took time.Duration
		var cost float64
		miss := "-"
		ok := 0
		for _, r := range c.Runs {
			took += r.Duration
			cost += r.Cost
			switch {
			case r.Passed():
				ok++
			case miss != "-":
			case r.Err != nil:
				miss = fmt.Sprintf("run %d: %v", r.N, r.Err)
			default:
				miss = fmt.Sprintf("run %d: %s", r.N, r.Misses[0])
			}
		}
		n := max(len(c.Runs), 1)
		result := "FAIL"
		if c.Passed {
			result = "pass"
			passed++
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%s\t$%.4f\t%s\n", c.Name, result, ok, len(c.Runs),
			(took / time.Duration(n)).Round(time.Millisecond), cost/float64(n), strings.ReplaceAll(miss, "\n", " "))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%d of %d cases passed\n", passed, len(results))
	return err
}

// junit is the JUnit XML report: one test case per run.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name    string        `xml:"name,attr"`
	Class   string        `xml:"classname,attr"`
	Time    float64       `xml:"time,attr"`
	Failure *junitMessage `xml:"failure,omitempty"`
	Error   *junitMessage `xml:"error,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the runs as JUnit XML: a suite named after the set,
// a test case per run ("case #N"), a failure listing its misses, an error
// for a run that got no answer.
func WriteJUnit(w io.Writer, s Set, results []CaseResult) error {
	suite := junitSuite{Name: s.Name}
	for _, c := range results {
		for _, r := range c.Runs {
			tc := junitCase{Name: fmt.Sprintf("%s #%d", c.Name, r.N), Class: s.Name, Time: r.Duration.Seconds()}
			switch {
			case r.Err != nil:
				tc.Error = &junitMessage{Message: r.Err.Error(), Text: r.Err.Error()}
				suite.Errors++
			case len(r.Misses) > 0:
				tc.Failure = &junitMessage{Message: r.Misses[0], Text: strings.Join(r.Misses, "\n")}
				suite.Failures++
			}
			suite.Tests++
			suite.Time += r.Duration.Seconds()
			suite.Cases = append(suite.Cases, tc)
		}
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(junitSuites{Suites: []junitSuite{suite}}); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
