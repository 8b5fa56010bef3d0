package nodecrdresourcefit

import "github.com/accord-sched/accord/pkg/descheduler/evictions"

func evictionsLimits(total *int) evictions.Limits { return evictions.Limits{Total: total} }
