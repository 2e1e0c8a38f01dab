"""The serving analysis: configurations, curves, operating points under the p99 bound,
cost per million predictions and every comparison."""
