package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentmesh/agentmesh/client"
	"github.com/agentmesh/agentmesh/pipelinespec"
)

func init() { register(newScheduleCmd) }

func newScheduleCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schedule",
		Short: "Run pipelines on a cron, at an interval or once at a time",
		Long: `A schedule is a pipeline the mesh runs by itself. It is kept by the NATS
server as a JetStream message schedule (stream MESH_SCHEDULES), not by a
scheduler process: it survives every orchestrator restarting, and each time it
fires one run starts, named <schedule>-<time>-<sequence>. See docs/protocol.md
("Schedules").`,
	}
	cmd.AddCommand(newScheduleAddCmd(a), newScheduleLsCmd(a), newScheduleRmCmd(a))
	return cmd
}

func newScheduleAddCmd(a *app) *cobra.Command {
	var (
		name    string
		sch     pipelinespec.Schedule
		replace bool
	)
	cmd := &cobra.Command{
		Use:   "add FILE",
		Short: "Add the pipeline in FILE as a schedule (its schedule: or --cron, --every, --at)",
		Long: `Adds the pipeline in FILE (YAML or JSON) as a schedule named after the
pipeline (--name to choose). When it runs is the file's schedule: (one of
cron, every, at) or the flag given, which replaces it:

  --cron  six fields, seconds first ("0 30 9 * * MON-FRI": 9:30:00 on
          weekdays), or @hourly, @daily, @weekly, @monthly, @yearly;
          --time-zone reads it in an IANA zone (default UTC)
  --every a duration of at least 1s (90s, 15m, 1h)
  --at    one time, RFC 3339 (2026-12-01T09:00:00Z)

A name in use is refused; --replace replaces that schedule.`,
		Example: `  agentmesh schedule add nightly.yaml --cron '0 0 2 * * *'
  agentmesh schedule add report.yaml --name hourly-report --every 1h
  agentmesh schedule add once.yaml --at 2026-12-01T09:00:00Z`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			flags := cmd.Flags()
			given := pipelinespec.Schedule{}
			n := 0
			for _, f := range []struct {
				flag string
				dst  *string
				v    string
			}{{"cron", &given.Cron, sch.Cron}, {"every", &given.Every, sch.Every}, {"at", &given.At, sch.At}} {
				if flags.Changed(f.flag) {
					*f.dst = f.v
					n++
				}
			}
			if n > 1 {
				return usagef("give one of --cron, --every and --at, not %d", n)
			}
			if flags.Changed("time-zone") {
				given.TimeZone = sch.TimeZone
			}
			spec, err := client.LoadPipeline(args[0])
			if err != nil {
				return exitError{code: 1, msg: oneLine(err.Error())}
			}
			if n == 1 {
				if err := given.Validate(); err != nil {
					return usageError{err}
				}
				spec.Schedule = &given
			} else if given.TimeZone != "" {
				if spec.Schedule == nil {
					return usagef("--time-zone %q needs a schedule: give --cron, or schedule: in %s", given.TimeZone, args[0])
				}
				s := *spec.Schedule
				s.TimeZone = given.TimeZone
				spec.Schedule = &s
			}
			if spec.Schedule == nil {
				return usagef("pipeline in %s has no schedule: add schedule: to it, or give --cron, --every or --at", args[0])
			}
			if err := spec.Validate(); err != nil {
				return exitError{code: 1, msg: oneLine(err.Error())}
			}
			if name == "" {
				name = spec.Name
				if name == "" {
					return usagef("pipeline in %s has no name: give --name", args[0])
				}
			}
			if err := client.ValidateScheduleName(name); err != nil {
				return usageError{err}
			}
			ctx := cmd.Context()
			m, err := a.connect(ctx, "agentmesh schedule add")
			if err != nil {
				return err
			}
			defer m.Close()
			if err := client.AddSchedule(ctx, m.JS, m.Names, name, spec, replace); err != nil {
				return exitError{code: 1, msg: oneLine(err.Error())}
			}
			if a.jsonOut {
				return a.printJSON(client.ScheduleInfo{Name: name, Pipeline: spec.Name, Schedule: *spec.Schedule, Pattern: spec.Schedule.Pattern(), Added: time.Now().UTC()})
			}
			fmt.Fprintf(a.out, "schedule %s added: pipeline %q %s\n", name, spec.Name, spec.Schedule)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&name, "name", "", "the schedule's name (default: the pipeline's name)")
	f.StringVar(&sch.Cron, "cron", "", "run on this cron schedule: six fields, seconds first, or @hourly, @daily...")
	f.StringVar(&sch.Every, "every", "", "run at this interval (at least 1s): 90s, 15m, 1h")
	f.StringVar(&sch.At, "at", "", "run once at this RFC 3339 time")
	f.StringVar(&sch.TimeZone, "time-zone", "", "the IANA time zone --cron is read in (default UTC)")
	f.BoolVar(&replace, "replace", false, "replace the schedule of this name if there is one")
	return cmd
}

func newScheduleLsCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "ls",
		Short: "List the schedules: name, pipeline, when, added",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			m, err := a.connect(ctx, "agentmesh schedule ls")
			if err != nil {
				return err
			}
			defer m.Close()
			list, err := client.Schedules(ctx, m.JS, m.Names)
			if err != nil {
				return err
			}
			if a.jsonOut {
				if list == nil {
					list = []client.ScheduleInfo{}
				}
				return a.printJSON(list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.out, "no schedules (agentmesh schedule add FILE adds one)")
				return nil
			}
			tw := tabwriter.NewWriter(a.out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tPIPELINE\tWHEN\tADDED")
			for _, s := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, orDash(s.Pipeline), s.Schedule, s.Added.UTC().Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
}

func newScheduleRmCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "rm NAME...",
		Short: "Remove schedules: they fire no more; --json prints {\"removed\": [names]}",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			for _, name := range args {
				if err := client.ValidateScheduleName(name); err != nil {
					return usageError{err}
				}
			}
			ctx := cmd.Context()
			m, err := a.connect(ctx, "agentmesh schedule rm")
			if err != nil {
				return err
			}
			defer m.Close()
			var errs []error
			removed := []string{}
			for _, name := range args {
				if err := client.RemoveSchedule(ctx, m.JS, m.Names, name); err != nil {
					errs = append(errs, err)
					continue
				}
				removed = append(removed, name)
				if !a.jsonOut {
					fmt.Fprintf(a.out, "removed schedule %s\n", name)
				}
			}
			if a.jsonOut {
				if err := a.printJSON(map[string][]string{"removed": removed}); err != nil {
					return err
				}
			}
			return errors.Join(errs...)
		},
	}
}
