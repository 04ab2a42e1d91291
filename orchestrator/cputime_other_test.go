//go:build !unix

package orchestrator_test

import "time"

// cpuTime is not measured here: the CPU metrics of the benchmarks read 0.
func cpuTime() time.Duration { return 0 }
