package metrics_test

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// family gathers reg and returns the family called name.
func family(t *testing.T, reg prometheus.Gatherer, name string) *dto.MetricFamily {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == name {
			return f
		}
	}
	t.Fatalf("no metric family %s", name)
	return nil
}

// single returns the one metric of family name.
func single(t *testing.T, reg prometheus.Gatherer, name string) *dto.Metric {
	t.Helper()
	f := family(t, reg, name)
	if len(f.GetMetric()) != 1 {
		t.Fatalf("%s has %d series, want 1", name, len(f.GetMetric()))
	}
	return f.GetMetric()[0]
}

func histogram(t *testing.T, reg prometheus.Gatherer, name string) *dto.Histogram {
	t.Helper()
	return single(t, reg, name).GetHistogram()
}
