import { defineCampaign } from "./campaign";

defineCampaign();
