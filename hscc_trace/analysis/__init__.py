"""Results of an analysis: the pipeline that runs it, the JSON results, the CI check, table exports."""
