"""Pure, vmappable numerics on a prepared problem: exact derivatives, column selection, the
solver, the fit core, sandwich covariances and targets, what the data determine, resampling
weights, batched refits, and the variational and convergence tools of the Bayesian wings."""
