// mlbs — MultiLayered Buffer Storage. The one header users include.
#pragma once

#include "mlbs/config.hpp"
#include "mlbs/errors.hpp"
#include "mlbs/features.hpp"
#include "mlbs/reader.hpp"
#include "mlbs/runtime.hpp"
#include "mlbs/stats.hpp"
#include "mlbs/store.hpp"
#include "mlbs/store_options.hpp"
#include "mlbs/trace.hpp"
#include "mlbs/version.hpp"
