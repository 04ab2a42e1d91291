package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/agentmesh/agentmesh/telemetry"
	"github.com/agentmesh/agentmesh/telemetry/export"
)

// Environment variables of the log flags; `up` passes the flags to its
// children through them.
const (
	envLogFormat = "AGENTMESH_LOG_FORMAT"
	envLogLevel  = "AGENTMESH_LOG_LEVEL"
)

// observability holds the log flags and the trace exporter of the process.
type observability struct {
	logFormat string
	logLevel  string
	level     slog.Level
	levelSet  bool // --log-level or its variable was given

	shutdown func(context.Context) error
}

func (o *observability) register(f *pflag.FlagSet) {
	f.StringVar(&o.logFormat, "log-format", envOr(envLogFormat, "text"),
		"log lines on stderr as text or json (env "+envLogFormat+")")
	f.StringVar(&o.logLevel, "log-level", os.Getenv(envLogLevel),
		"least level logged: debug, info, warn or error (env "+envLogLevel+"; without either, warn, or info with --verbose)")
}

// start checks the log flags, hands them on to child processes, and
// installs the OTLP trace exporter when OTEL_EXPORTER_OTLP_ENDPOINT (or
// _TRACES_ENDPOINT) is set, with service name agentmesh-<command> unless
// OTEL_SERVICE_NAME says otherwise.
func (o *observability) start(cmd *cobra.Command) error {
	if _, err := telemetry.ParseLogFormat(o.logFormat); err != nil {
		return usageError{fmt.Errorf("--log-format: %w", err)}
	}
	if o.logLevel != "" {
		lvl, err := telemetry.ParseLogLevel(o.logLevel)
		if err != nil {
			return usageError{fmt.Errorf("--log-level: %w", err)}
		}
		o.level, o.levelSet = lvl, true
		_ = os.Setenv(envLogLevel, o.logLevel)
	}
	_ = os.Setenv(envLogFormat, o.logFormat)
	shutdown, err := export.Setup(cmd.Context(), "agentmesh-"+strings.ReplaceAll(cmd.Name(), " ", "-"))
	if err != nil {
		return err
	}
	o.shutdown = shutdown
	return nil
}

// stop flushes the spans still queued, waiting at most a few seconds for
// an exporter whose collector is down.
func (o *observability) stop() {
	if o.shutdown == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	_ = o.shutdown(ctx)
}

// logger returns the logger of a long-running command: stderr in the
// --log-format, from --log-level, else info when verbose, else warn. Every
// line written with a context carries its trace and ids (telemetry.Handler).
func (a *app) logger(verbose bool) *slog.Logger {
	level := slog.LevelWarn
	switch {
	case a.obs.levelSet:
		level = a.obs.level
	case verbose:
		level = slog.LevelInfo
	}
	l, err := telemetry.NewLogger(a.errOut, a.obs.logFormat, level)
	if err != nil { // checked in start; text is the fallback
		l, _ = telemetry.NewLogger(a.errOut, "text", level)
	}
	return l
}
