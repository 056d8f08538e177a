import { defineFarSideCampaign } from "./far-side";

defineFarSideCampaign();
