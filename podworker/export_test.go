package podworker

// EngineNames and NewOnEngine let the external tests and benchmarks run the Runner on
// each engine; GoroutinesCreated counts the goroutines the process started.
var (
	EngineNames = func() []string {
		var names []string
		for _, e := range engines {
			names = append(names, e.name)
		}
		return names
	}()
	NewOnEngine       = newOnEngine
	GoroutinesCreated = goroutinesCreated
)
