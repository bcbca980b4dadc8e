"""Pure, vmappable numerics on a prepared problem: exact derivatives, column selection, the
solver and its starting points, the fit core, sandwich covariances and targets, what the data
determine, resampling weights, batched refits, and the posterior tools (R-hat, variational
inference) the two Bayesian wings share."""
