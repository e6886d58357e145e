// The worker thread of checkDatasetOffLoop: checks one file and posts the result.
import { parentPort, workerData } from "node:worker_threads";
import { checkDataset, type DatasetCheckRequest } from "./dataset-validation.js";

parentPort?.postMessage(checkDataset(workerData as DatasetCheckRequest));
